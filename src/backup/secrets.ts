/**
 * The secrets of `magpie backup --with-secrets` (`.env`, the dashboard token,
 * the Matrix device's crypto store): one JSON document encrypted with age's
 * passphrase recipient (scrypt, then ChaCha20-Poly1305; the `age-encryption`
 * package, the reference TypeScript implementation of age-encryption.org/v1).
 * The entry `secrets.age` can also be opened with the `age` command:
 * `tar -xzOf backup.tar.gz secrets.age | age -d`.
 */
import { Decrypter, Encrypter } from 'age-encryption';
import { z } from 'zod';
import { AppError, ExitCode } from '../errors/index.js';

/** The name of the encrypted entry inside the archive. */
export const SECRETS_NAME = 'secrets.age';

/** Secret files by where they go: `env` (the .env file) and `state/<path>` (under the state folder). */
export type SecretFiles = Record<string, Buffer>;

const SecretsSchema = z.record(z.string(), z.string());

/** age's scrypt work factor (log2 N) for new archives: age's own default, about a second. */
export const SCRYPT_WORK_FACTOR = 18;

/** `files` encrypted with `passphrase` (scrypt work factor `workFactor`, recorded in the entry). */
export async function encryptSecrets(
  files: SecretFiles,
  passphrase: string,
  workFactor = SCRYPT_WORK_FACTOR,
): Promise<Buffer> {
  const encrypter = new Encrypter();
  encrypter.setPassphrase(passphrase);
  encrypter.setScryptWorkFactor(workFactor);
  const json = JSON.stringify(
    Object.fromEntries(Object.entries(files).map(([k, v]) => [k, v.toString('base64')])),
  );
  return Buffer.from(await encrypter.encrypt(json));
}

/** The files of `sealed`; a wrong passphrase (or a damaged entry) is one line, exit 2. */
export async function decryptSecrets(sealed: Buffer, passphrase: string): Promise<SecretFiles> {
  const decrypter = new Decrypter();
  decrypter.addPassphrase(passphrase);
  let text: string;
  try {
    text = await decrypter.decrypt(new Uint8Array(sealed), 'text');
  } catch {
    throw new AppError(
      'CONFIG_INVALID',
      "the passphrase does not open the archive's secrets (wrong MAGPIE_BACKUP_PASSPHRASE?); nothing was restored",
      { exitCode: ExitCode.config },
    );
  }
  const parsed = SecretsSchema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new AppError('INVALID_MESSAGE', "the archive's secrets are malformed; nothing was restored");
  return Object.fromEntries(Object.entries(parsed.data).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
}
