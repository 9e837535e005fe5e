// @bearagent/client: the stream protocol types (stream.ts), the trust-boundary decoder (decode.ts) and the HTTP
// client (client.ts) for `bearagent serve`.

export * from "./stream.ts";
export * from "./decode.ts";
export * from "./client.ts";
