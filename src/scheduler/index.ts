/** Heartbeat and cron schedulers (not built yet). */
export {};
