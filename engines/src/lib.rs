//! ragbox's engines and what they stand on, a crate of their own so that
//! the compiler holds them to it: they know no MCP, no runtime, no tool and
//! no config, and an edit above them does not rebuild them.
//!
//! From the top: the encoder ([`embed`]) and the per-user embedding cache
//! ([`embed_cache`]); the vector index ([`index`]) and the keyword index
//! ([`fulltext`]), both derived from a store; the two stores ([`store`]:
//! redb, [`postgres`]: a shared PostgreSQL collection), which keep what
//! [`records`] types; the workspace's data dir ([`datadir`]); and the one OS
//! interface ([`platform`]) with small helpers ([`sync`], [`mapped`], [`text`]).

pub mod datadir;
pub mod embed;
pub mod embed_cache;
pub mod fulltext;
pub mod index;
pub mod mapped;
pub mod platform;
pub mod postgres;
pub mod records;
pub mod store;
pub mod sync;
pub mod text;
