//! End-to-end tests: the real `ragbox` binary over stdio, driven by rmcp's client
//! and by raw JSON-RPC lines.

mod cache;
mod catalog;
mod cli_search;
mod code_units;
mod cortext_rag;
mod documents;
mod embedding;
mod hostile_clone;
mod hostile_inputs;
mod hostile_repo;
mod init_doctor;
mod languages;
mod load;
mod postgres;
mod protocol;
mod rag_server;
mod readme;
mod resources;
mod sandbox;
mod schemas;
mod search_workspace;
mod service;
mod sessions;
mod skills;
mod skills_extension;
mod third_party;
mod watch;
