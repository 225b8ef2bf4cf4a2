//! End-to-end tests: the real `ragbox` binary over stdio, driven by rmcp's client
//! and by raw JSON-RPC lines.

mod catalog;
mod embedding;
mod protocol;
mod sandbox;
mod search_workspace;
