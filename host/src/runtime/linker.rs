//! The linker every component is instantiated with: WASI p2 (whose reach is
//! set per call by the WASI context, its filesystem guarded by `fs_guard`)
//! plus the host capabilities.

use super::bindings::Tool;
use super::fs_guard::Guarded;
use super::sandbox::HostState;
use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

/// WASI and the `ragbox:tools` host interfaces, bound to [`HostState`].
pub fn capabilities_linker(engine: &Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    // The guarded filesystem replaces wasmtime-wasi's `wasi:filesystem/types`.
    linker.allow_shadowing(true);
    wasmtime_wasi::p2::bindings::sync::filesystem::types::add_to_linker::<_, Guarded>(
        &mut linker,
        HostState::guarded_fs,
    )?;
    linker.allow_shadowing(false);
    Tool::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    Ok(linker)
}
