//! `extract`: documents that are not text, read by the extractor components
//! (`runtime::extract`), each file in its own sandbox.

use super::error::{error, invalid};
use crate::runtime::bindings::ragbox::tools::documents::{self, Extracted};
use crate::runtime::bindings::ragbox::tools::extract;
use crate::runtime::bindings::ragbox::tools::types::{Error, ErrorCode};
use crate::runtime::{ExtractFailure, HostState, Stage};

impl documents::Host for HostState {}

impl extract::Host for HostState {
    fn formats(&mut self) -> Vec<String> {
        self.env.extractors.formats()
    }

    fn identity(&mut self, name: String) -> Option<String> {
        self.env.extractors.identity(&name)
    }

    fn extract(&mut self, name: String, bytes: Vec<u8>) -> Result<Extracted, Error> {
        // Reading a document may take a while: other processes may want the store meanwhile.
        self.release_store();
        // One file's budget ends where the call should wind down, so the tool
        // still has the last tenth of its time to keep what it finished.
        let remaining = self.guard.soft_remaining();
        let cancel = self.env.cancel.clone();
        let extractors = self.env.extractors.clone();
        let read = self.timed(Stage::Extract, |_| extractors.extract(&name, &bytes, remaining, cancel));
        read.map_err(|failure| match failure {
            ExtractFailure::Cancelled => error(ErrorCode::Cancelled, "reading the document was cancelled"),
            // Out of time before its turn: stopped like a cancel (read next run), said as what it is.
            busy @ ExtractFailure::Busy => error(ErrorCode::Cancelled, busy.to_string()),
            // Not the file's fault: the indexer reads it again next run.
            unloadable @ ExtractFailure::Unloadable { .. } => error(ErrorCode::Internal, unloadable.to_string()),
            other => invalid(other.to_string()),
        })
    }
}
