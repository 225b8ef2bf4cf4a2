//! ragbox's built-in document extractor: the text of PDF, DOCX, PPTX, XLSX, ODS, ODT, EPUB,
//! RTF and Jupyter notebook files, for the host to chunk and index. This file is only the
//! component glue; the readers are plain modules that build and test natively.

pub mod content;
pub mod dispatch;
pub mod epub;
pub mod html;
pub mod ipynb;
pub mod model;
pub mod odf;
pub mod ooxml;
pub mod pdf;
pub mod rtf;
pub mod sheets;
pub mod xml;
pub mod zipx;

pub use dispatch::{FORMATS, extract};
pub use model::{ExtractError, Extracted, Part};

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({ world: "extractor", path: "../../wit" });

    use ragbox::tools::documents as wit;

    struct Component;

    impl Guest for Component {
        fn formats() -> Vec<String> {
            crate::FORMATS.iter().map(|f| (*f).to_string()).collect()
        }

        fn extract(name: String, bytes: Vec<u8>) -> Result<wit::Extracted, wit::ExtractError> {
            match crate::extract(&name, &bytes) {
                Ok(e) => Ok(wit::Extracted {
                    title: e.title,
                    metadata: e.metadata,
                    parts: e.parts.into_iter().map(|p| wit::Part { label: p.label, text: p.text }).collect(),
                }),
                Err(crate::ExtractError::Malformed(m)) => Err(wit::ExtractError::Malformed(m)),
                Err(crate::ExtractError::NoText(m)) => Err(wit::ExtractError::NoText(m)),
                Err(crate::ExtractError::Unsupported(m)) => Err(wit::ExtractError::Unsupported(m)),
            }
        }
    }

    export!(Component);
}
