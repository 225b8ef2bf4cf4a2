//! Searching the index: by meaning ([`semantic`]), by keyword and meaning
//! fused ([`hybrid`]), an identifier as written ([`exact`]), one answer per
//! file ([`group`]) with its lines ([`lines`]), each hit passed along with
//! its relevance ([`scored`]); and keyword scoring of text read directly
//! ([`keywords`]).

pub mod exact;
pub mod group;
pub mod hybrid;
pub mod keywords;
pub mod lines;
pub mod scored;
pub mod semantic;
