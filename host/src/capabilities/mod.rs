//! The host side of the WIT interfaces components import. Thin: each function
//! checks its inputs and grants, then calls into the corpus below.

mod convert;
mod corpus;
mod embedder;
mod error;
mod host;
mod search;

pub(crate) use error::{denied, internal};
