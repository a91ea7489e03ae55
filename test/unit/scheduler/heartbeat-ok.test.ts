import { describe, expect, it } from 'vitest';
import { isHeartbeatOk } from '../../../src/scheduler/heartbeat-ok.js';

const words = (n: number) => 'x'.repeat(n);

describe("isHeartbeatOk (the issue's exact cases)", () => {
  it('drops a bare HEARTBEAT_OK', () => expect(isHeartbeatOk('HEARTBEAT_OK')).toBe(true));
  it('drops **HEARTBEAT_OK**', () => expect(isHeartbeatOk('**HEARTBEAT_OK**')).toBe(true));
  it('drops <b>HEARTBEAT_OK</b>', () => expect(isHeartbeatOk('<b>HEARTBEAT_OK</b>')).toBe(true));
  it('drops HEARTBEAT_OK followed by 200 characters', () =>
    expect(isHeartbeatOk(`HEARTBEAT_OK ${words(200)}`)).toBe(true));
  it('delivers HEARTBEAT_OK followed by 400 characters', () =>
    expect(isHeartbeatOk(`HEARTBEAT_OK ${words(400)}`)).toBe(false));
  it('delivers a sentence with the token in the middle', () =>
    expect(isHeartbeatOk('The build is broken, not HEARTBEAT_OK at all: please look at it now.')).toBe(
      false,
    ));
});

describe('isHeartbeatOk (more)', () => {
  it('drops the token at the end of a short note', () =>
    expect(isHeartbeatOk('Checked the weather, no rain. `HEARTBEAT_OK`')).toBe(true));
  it('drops _HEARTBEAT_OK_ and surrounding whitespace', () =>
    expect(isHeartbeatOk('\n  _HEARTBEAT_OK_.\n')).toBe(true));
  it('delivers a reply without the token', () =>
    expect(isHeartbeatOk('It will rain in Lisbon at 15:00.')).toBe(false));
  it('does not treat a longer word as the token', () => expect(isHeartbeatOk('HEARTBEAT_OKAY')).toBe(false));
  it('delivers 400 characters before the token at the end', () =>
    expect(isHeartbeatOk(`${words(400)} HEARTBEAT_OK`)).toBe(false));
});
