/** cluster-key-slot (the hash slot function ioredis itself uses) ships no types. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0–16383) of `key`, honouring a `{hash tag}`. */
  export default function calculateSlot(key: string | Buffer): number;
}
