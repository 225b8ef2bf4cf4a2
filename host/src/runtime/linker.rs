//! The linker every component is instantiated with: WASI p2 (whose reach is
//! set per call by the WASI context) plus the host capabilities.

use super::bindings::Tool;
use super::sandbox::HostState;
use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

/// WASI and the `ragbox:tools` host interfaces, bound to [`HostState`].
pub fn capabilities_linker(engine: &Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    Tool::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    Ok(linker)
}
