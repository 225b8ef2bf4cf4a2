//! One session's life: what starts beside its clients (the warm-up, the
//! tools poll, the workspace's watch), serving its lines until the client
//! leaves, and waiting for its work before it ends. Above the server and
//! the watch, so that neither calls the other's starter.

use super::follow::watch_workspace;
use super::server::RagboxServer;
use super::stdio::Flow;
use rmcp::ServiceExt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Starts what runs beside the clients: the warm-up and the tools poll
/// ([`RagboxServer::start_warm_up`]) and the workspace's watch (which, with
/// `watch`, also indexes). They stop when `stop` fires.
pub fn start_background(server: &RagboxServer, watch: bool, stop: &CancellationToken) {
    let corpus = server.start_warm_up(stop);
    server.spawn(watch_workspace(server.clone(), corpus, watch, stop.clone()));
}

/// Serves MCP over stdin/stdout until the client disconnects.
pub async fn serve_stdio(server: RagboxServer, watch: bool) -> anyhow::Result<()> {
    serve_lines(server, watch, tokio::io::stdin(), tokio::io::stdout(), None).await
}

/// Serves MCP as stdio does, one JSON-RPC message a line, over `input` and
/// `output` (stdin and stdout, or a relay's socket), until `input` ends; the
/// lines `logs` brings go out too, marked as log lines (see `stdio::LOG_LINE`).
pub async fn serve_lines<R, W>(
    server: RagboxServer,
    watch: bool,
    input: R,
    output: W,
    logs: Option<tokio::sync::mpsc::Receiver<Vec<u8>>>,
) -> anyhow::Result<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let stop = CancellationToken::new();
    start_background(&server, watch, &stop);
    let session = server.clone();
    let flow = Arc::new(Flow::default());
    server.set_flow(flow.clone());
    let (transport, writer) = super::stdio::framed(input, output, logs, flow);
    let running = server.serve(transport).await;
    let running = match running {
        Ok(running) => running,
        Err(e) => {
            stop.cancel();
            session.finish().await;
            return Err(e.into());
        }
    };
    let reason = running.waiting().await;
    stop.cancel();
    // Nothing of the session's goes on once it has ended.
    session.finish().await;
    let reason = reason?;
    // The last replies out before the process ends.
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    tracing::info!("client disconnected ({reason:?})");
    Ok(())
}
