//! How each documented tool set answers: the Cortext tools' error shape
//! ([`cortext`]) and the RAG MCP Server's error shape, source objects,
//! filters and search modes ([`rag_server`]).

pub mod cortext;
pub mod rag_server;
