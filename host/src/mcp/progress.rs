//! Forwarding a tool's progress reports to the client as MCP progress
//! notifications. Only the newest report is kept and at most one goes out per
//! [`MIN_GAP`] (the host has cut its message to 4 KiB already): a tight guest
//! loop cannot flood the channel, and the last report still reaches the client.

use crate::runtime::{Progress, ProgressSink};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Minimum gap between two notifications.
const MIN_GAP: Duration = Duration::from_millis(100);

/// Returns the sink a call reports into, and the task sending its reports; the
/// task sends the newest unsent report and ends once every copy of the sink
/// is dropped (when the call is over), or at once when the call is `cancelled`
/// (a cancelled request gets nothing more).
pub fn forwarder(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    cancelled: CancellationToken,
) -> (ProgressSink, JoinHandle<()>) {
    let (tx, mut rx) = watch::channel::<Option<Progress>>(None);
    let sink: ProgressSink = Arc::new(move |p: Progress| {
        tx.send_replace(Some(p));
    });
    let task = tokio::spawn(async move {
        // `changed` still yields a value sent just before the sink was dropped.
        while rx.changed().await.is_ok() {
            if cancelled.is_cancelled() {
                break;
            }
            let Some(p) = rx.borrow_and_update().clone() else { continue };
            if let Err(e) = peer.notify_progress(param(&token, p)).await {
                tracing::debug!("progress notification not sent: {e}");
                break;
            }
            tokio::time::sleep(MIN_GAP).await;
        }
    });
    (sink, task)
}

fn param(token: &ProgressToken, p: Progress) -> ProgressNotificationParam {
    let mut param = ProgressNotificationParam::new(token.clone(), p.done as f64);
    if let Some(total) = p.total {
        param = param.with_total(total as f64);
    }
    if let Some(message) = p.message {
        param = param.with_message(message);
    }
    param
}
