//! The host side of the WIT interfaces components import. Thin: each function
//! checks its inputs and calls into the engine below.

mod host;
