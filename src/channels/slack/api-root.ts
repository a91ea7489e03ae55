/** Slack's Web API root (the Socket Mode URL comes from `apps.connections.open` on it). */
export const SLACK_API_ROOT = 'https://slack.com/api/';
