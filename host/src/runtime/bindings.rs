//! Host-side bindings generated from `wit/`.

wasmtime::component::bindgen!({
    world: "tool",
    path: "../wit",
});
