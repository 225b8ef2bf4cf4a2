//! Reading the workspace into the index: which files there are ([`walk`]),
//! what each is ([`document`], [`skill`], the Cortext [`layout`]), how it is
//! cut ([`chunk`] for prose, [`code`] for whole code units) and the run that
//! brings the index in line with the workspace ([`indexer`]).

pub mod chunk;
pub mod code;
pub mod document;
pub mod indexer;
pub mod layout;
pub mod skill;
pub mod walk;
