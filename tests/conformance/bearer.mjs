// Preloaded into the conformance suite (node --import): adds ragbox's bearer
// token to every HTTP request it makes, since the suite has no option for
// headers. Both fetch (the SDK's client) and undici.request (the raw probes)
// go through the global dispatcher set here.
import { Agent, setGlobalDispatcher } from "undici";

const token = process.env.RAGBOX_TOKEN;
if (!token) {
  throw new Error("RAGBOX_TOKEN is not set");
}

function withToken(headers) {
  const auth = `Bearer ${token}`;
  if (Array.isArray(headers)) {
    return [...headers, "authorization", auth];
  }
  if (headers && typeof headers[Symbol.iterator] === "function") {
    return [...Array.from(headers).flat(), "authorization", auth];
  }
  return { ...(headers ?? {}), authorization: auth };
}

setGlobalDispatcher(
  new Agent().compose((dispatch) => (options, handler) => dispatch({ ...options, headers: withToken(options.headers) }, handler)),
);
