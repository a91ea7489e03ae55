/** The one message an unknown sender gets on every channel: how the owner admits them. */

/**
 * The pairing message for `code`. It names the CLI command only: the code
 * admits whoever holds it, so it is never written to a log.
 */
export function pairingText(code: string): string {
  return `Hi! I don't know you yet. Ask my owner to run: npx magpie pairing approve ${code}`;
}
