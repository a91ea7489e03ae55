/**
 * What the Matrix channel keeps in Redis (bus/matrix-store.ts implements it):
 * the sync position, the device a password login created, and the encrypted
 * rooms already told that magpie cannot read them.
 */
export interface MatrixStore {
  /** The `since` of the last sync whose events were all handled; undefined on a first start. */
  position(account: string): Promise<string | undefined>;
  savePosition(account: string, since: string): Promise<void>;
  device(account: string): Promise<{ accessToken: string; deviceId: string } | undefined>;
  saveDevice(account: string, device: { accessToken: string; deviceId: string }): Promise<void>;
  forgetDevice(account: string): Promise<void>;
  /** True only the first time it is asked for `room`, across every gateway. */
  firstEncryptedNotice(room: string): Promise<boolean>;
}
