//! Host-side bindings generated from `wit/`.
#![allow(missing_docs)]

wasmtime::component::bindgen!({
    world: "tool",
    path: "../wit",
});
