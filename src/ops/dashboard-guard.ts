/**
 * What every dashboard response carries and what every request must show
 * before anything else runs: security headers (a Content-Security-Policy with
 * no inline script and `frame-ancestors 'none'`, no framing, no sniffing, no
 * referrer) and a Host header naming this loopback server. The Host check
 * stops DNS rebinding: a web page whose name was re-pointed at 127.0.0.1 is
 * same-origin for the browser but sends its own name as Host, and is refused.
 */
import type { NextFunction, Request, Response } from 'express';

/**
 * The Content-Security-Policy of every response: scripts only from this
 * server (no inline script, no eval), audio from here (the web chat's
 * players), styles from here or inline (Bull
 * Board's markup uses style attributes), nothing from other origins, forms
 * post only here, and no page may frame the dashboard.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "media-src 'self'",
  "manifest-src 'self'",
  "form-action 'self'",
  "base-uri 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers set on every response, errors and refusals included. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
});

/** Express middleware: sets {@link SECURITY_HEADERS} before anything else answers. */
export function securityHeaders() {
  return (_req: Request, res: Response, next: NextFunction) => {
    res.set(SECURITY_HEADERS);
    next();
  };
}

/**
 * True when `host` (the Host header) names this server: `127.0.0.1`,
 * `localhost` or `[::1]` with the port it listens on (case-insensitive; the
 * port may be left out only when it is 80). Anything else — another name, a
 * name that merely starts like ours, another port, no Host — is false.
 */
export function isLoopbackHost(host: string | undefined, port: number): boolean {
  if (!host) return false;
  const value = host.toLowerCase();
  for (const name of ['127.0.0.1', 'localhost', '[::1]']) {
    if (value === `${name}:${port}`) return true;
    if (port === 80 && value === name) return true;
  }
  return false;
}

/** Express middleware: 421 for a request whose Host header is not this loopback server. */
export function requireLoopbackHost() {
  return (req: Request, res: Response, next: NextFunction) => {
    if (isLoopbackHost(req.headers.host, req.socket.localPort ?? 0)) {
      next();
      return;
    }
    res
      .status(421)
      .type('text')
      .send('magpie dashboard: misdirected request (open it at http://127.0.0.1:<port>/ or localhost)');
  };
}
