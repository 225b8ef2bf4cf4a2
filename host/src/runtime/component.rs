//! What a component is before it is a tool or an extractor: where it came
//! from, and whether the `ragbox:tools` version it was built against is one
//! this host serves. Below both kinds of component, so neither imports the other.

use std::path::PathBuf;
use wasmtime::Engine;
use wasmtime::component::Component;

/// Where a component came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Embedded in the ragbox binary (crate name).
    BuiltIn(String),
    /// A `.wasm` file from a tools folder.
    File(PathBuf),
}

impl Source {
    /// Its short name: the crate's, or the file's without `.wasm`.
    pub fn stem(&self) -> String {
        match self {
            Source::BuiltIn(name) => name.clone(),
            Source::File(path) => path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::BuiltIn(name) => write!(f, "built-in ({name})"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The version of `wit/ragbox.wit` this host serves. Within one `0.MINOR`
/// line versions only add (functions, interfaces, types), so a component
/// built against this version or an earlier one of the line links unchanged
/// (wasmtime matches its `@0.2.0` imports to these `@0.2.2` definitions).
pub const WIT_VERSION: &str = "0.2.2";

/// Whether a component that imports `ragbox:tools` at `version` runs on this
/// host; the error says what to rebuild or upgrade.
fn compatible(version: &str) -> Result<(), String> {
    let parse = |v: &str| -> Option<(u64, u64, u64)> {
        let mut parts = v.split('.').map(|p| p.parse::<u64>().ok());
        let triple = (parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(triple)
    };
    let (ours, theirs) = (parse(WIT_VERSION).unwrap_or_default(), parse(version));
    let line = |(major, minor, _): (u64, u64, u64)| if major == 0 { (0, minor) } else { (major, 0) };
    match theirs {
        Some(theirs) if line(theirs) == line(ours) && theirs <= ours => Ok(()),
        Some(theirs) if line(theirs) == line(ours) => Err(format!(
            "it was built against ragbox:tools@{version}, newer than the ragbox:tools@{WIT_VERSION} \
             this ragbox serves: upgrade ragbox, or build it against this ragbox's WIT (`ragbox tools new` carries it)"
        )),
        _ => Err(format!(
            "it was built against ragbox:tools@{version}, but this ragbox serves ragbox:tools@{WIT_VERSION} \
             (and what earlier versions of its line offer): rebuild it against the wit/ folder of this ragbox version"
        )),
    }
}

/// Refuses, by name, a component built against a version of the
/// `ragbox:tools` package this host cannot serve: the linker's own message
/// would only name one missing import.
pub(super) fn check_wit_version(engine: &Engine, component: &Component) -> Result<(), String> {
    let ty = component.component_type();
    let refused = ty.imports(engine).find_map(|(name, _)| {
        let (package, version) = name.strip_prefix("ragbox:tools/")?.split_once('@')?;
        compatible(version).err().map(|why| why.replacen("ragbox:tools@", &format!("ragbox:tools/{package}@"), 1))
    });
    refused.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_wit_package_s() {
        let wit = include_str!("../../../wit/ragbox.wit");
        assert!(wit.starts_with(&format!("package ragbox:tools@{WIT_VERSION};")));
    }

    #[test]
    fn a_component_for_another_wit_version_is_refused_by_name() {
        let engine = crate::runtime::new_engine().unwrap();
        let importing = |version: &str| {
            let text = format!(
                r#"(component (import "ragbox:tools/host@{version}" (instance (export "cancelled" (func (result bool))))))"#
            );
            Component::new(&engine, wat::parse_str(text).unwrap()).unwrap()
        };
        let e = check_wit_version(&engine, &importing("0.1.0")).unwrap_err();
        assert!(e.contains("built against ragbox:tools/host@0.1.0") && e.contains("rebuild"), "{e}");
        let e = check_wit_version(&engine, &importing("0.2.9")).unwrap_err();
        assert!(e.contains("newer than") && e.contains("upgrade ragbox"), "{e}");
        assert!(check_wit_version(&engine, &importing("0.3.0")).is_err());
        assert_eq!(check_wit_version(&engine, &importing(WIT_VERSION)), Ok(()));
        assert_eq!(check_wit_version(&engine, &importing("0.2.0")), Ok(()), "an earlier 0.2 still links");
    }
}
