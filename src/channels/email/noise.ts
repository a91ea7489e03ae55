/**
 * Mail that is never answered, whoever sent it: automatic replies and
 * bounces (`Auto-Submitted` other than `no`, a `MAILER-DAEMON` or
 * `postmaster` sender), list and bulk mail (`List-Id`, `Precedence: bulk`,
 * `list` or `junk`), and magpie's own mail (its From address, or the header
 * magpie puts on what it sends). Answering any of them risks a mail loop.
 */

/** The header magpie sets on every mail it sends (besides `Auto-Submitted: auto-replied`). */
export const MAGPIE_HEADER = 'x-magpie-reply';

/** Why the mail is noise, or undefined when it is a person's. */
export function noiseReason(
  header: (name: string) => string | undefined,
  from: string,
  ownAddress: string | undefined,
): string | undefined {
  const auto = header('auto-submitted')?.trim().toLowerCase();
  if (auto !== undefined && auto !== '' && !auto.startsWith('no')) return 'auto-submitted';
  const precedence = header('precedence')?.trim().toLowerCase();
  if (precedence === 'bulk' || precedence === 'list' || precedence === 'junk') return 'bulk';
  if (header('list-id') !== undefined) return 'list';
  if (header(MAGPIE_HEADER) !== undefined) return 'own';
  const address = from.toLowerCase();
  if (ownAddress !== undefined && address === ownAddress.toLowerCase()) return 'own';
  const local = address.slice(0, address.lastIndexOf('@'));
  if (local === 'mailer-daemon' || local === 'postmaster') return 'bounce';
  return undefined;
}
