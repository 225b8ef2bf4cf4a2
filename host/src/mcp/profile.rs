//! What `serve` lists (`--tools`, `--output-schemas`). Every agent reads
//! `tools/list` at every start and pays for it in context: one that needs
//! only search and context pays less with `core`. The default lists every
//! tool the seed documents name, without output schemas (half the bytes),
//! which clients that validate results ask for.

use std::collections::BTreeSet;
use std::str::FromStr;

/// The tools most agents need: search in every mode, skills, context for a
/// question, similar documents, and keeping the index up to date.
pub const CORE: [&str; 6] =
    ["search", "search_skills", "get_context", "search_similar", "embed_workspace", "get_embedding_status"];

/// The tools a server offers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Profile {
    /// Every loaded tool.
    #[default]
    All,
    /// [`CORE`], plus every third-party tool.
    Core,
    /// These tools only.
    Named(BTreeSet<String>),
}

impl FromStr for Profile {
    type Err = String;

    /// `all`, `core`, or tool names separated by commas.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "all" => Ok(Self::All),
            "core" => Ok(Self::Core),
            list => {
                let names: BTreeSet<String> =
                    list.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string).collect();
                if names.is_empty() {
                    return Err("give all, core, or tool names separated by commas".into());
                }
                Ok(Self::Named(names))
            }
        }
    }
}

/// As `--tools` writes it, read back by [`Profile::from_str`].
impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Core => f.write_str("core"),
            Self::Named(names) => f.write_str(&names.iter().map(String::as_str).collect::<Vec<_>>().join(",")),
        }
    }
}

/// What `tools/list` offers: which tools, and whether with output schemas.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offer {
    /// The tools listed.
    pub tools: Profile,
    /// List each tool's output schema too (without its prose), for clients
    /// that validate or type results; a model reads the result itself.
    pub output_schemas: bool,
}

impl Profile {
    /// Whether the tool `name` is offered; `builtin` says whether it is one
    /// of ragbox's own (a third-party tool is the user's choice: `core` keeps it).
    pub fn offers(&self, name: &str, builtin: bool) -> bool {
        match self {
            Self::All => true,
            Self::Core => !builtin || CORE.contains(&name),
            Self::Named(names) => names.contains(name),
        }
    }

    /// How the profile is named on the command line.
    pub fn shown(&self) -> String {
        match self {
            Self::All => "all".into(),
            Self::Core => "core".into(),
            Self::Named(names) => names.iter().cloned().collect::<Vec<_>>().join(","),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_and_choose() {
        assert_eq!("all".parse::<Profile>(), Ok(Profile::All));
        let core: Profile = "core".parse().unwrap();
        assert!(core.offers("search", true) && !core.offers("search_workspace", true));
        assert!(core.offers("find_todos", false), "a user's own tool stays");
        let named: Profile = " search, find_todos ,".parse().unwrap();
        assert!(
            named.offers("search", true) && named.offers("find_todos", false) && !named.offers("get_context", true)
        );
        assert_eq!(named.shown(), "find_todos,search");
        assert!(" , ".parse::<Profile>().is_err());
    }
}
