/** The web chat's CSRF rule, shared by its POST routes (routes.ts, voice-routes.ts). */
import type { Request } from 'express';

/**
 * Whether a POST comes from this origin: an `Origin` equal to `http://<Host>`, else a
 * `Sec-Fetch-Site: same-origin`, else (no browser headers at all) a bearer token rather than a cookie.
 */
export function fromThisOrigin(req: Request): boolean {
  const origin = req.get('origin');
  const site = req.get('sec-fetch-site');
  const own = `http://${req.get('host') ?? ''}`.toLowerCase();
  return origin !== undefined
    ? origin.toLowerCase() === own && (site === undefined || site === 'same-origin')
    : site !== undefined
      ? site === 'same-origin'
      : /^Bearer /.test(req.get('authorization') ?? '');
}
