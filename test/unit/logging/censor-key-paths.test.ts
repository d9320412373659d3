import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CENSOR, censorKeyPaths } from '../../../host/logging/censor-key-paths.ts';
import { createLogger } from '../../../host/logging/create-logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ level: 'info', redact: (l) => l, destination }) };
}

describe('censorKeyPaths', () => {
  it('censors the known fields one level down and headers.authorization, and nothing else', () => {
    const details = {
      apiKey: 'top-level-stays',
      config: { apiKey: 'a', api_key: 'b', token: 'c', password: 'd', authorization: 'e', model: 'm' },
      request: { headers: { authorization: 'Bearer x', accept: 'json' }, url: '/v1' },
      count: 3,
    };
    expect(censorKeyPaths(details)).toEqual({
      apiKey: 'top-level-stays',
      config: {
        apiKey: CENSOR,
        api_key: CENSOR,
        token: CENSOR,
        password: CENSOR,
        authorization: CENSOR,
        model: 'm',
      },
      request: { headers: { authorization: CENSOR, accept: 'json' }, url: '/v1' },
      count: 3,
    });
  });

  it('never changes what it was given, and returns it as is when nothing is censored', () => {
    const config = { token: 'secret-token' };
    const details = { config };
    expect(censorKeyPaths(details).config).toEqual({ token: CENSOR });
    expect(config.token).toBe('secret-token');
    const clean = { runId: 'r', nested: { model: 'm' } };
    expect(censorKeyPaths(clean)).toBe(clean);
  });

  it('keeps an Error an Error, with its message, when one of its fields is censored', () => {
    const err = Object.assign(new Error('upstream said no'), { token: 'tok-123' });
    const out = censorKeyPaths({ err }).err as Error & { token: string };
    expect(out).toBeInstanceOf(Error);
    expect(out.message).toBe('upstream said no');
    expect(out.token).toBe(CENSOR);
    expect(err.token).toBe('tok-123');
  });
});

describe('createLogger', () => {
  it('writes the known fields censored, in a child logger line too', () => {
    const { lines, logger } = capture();
    logger.info({ upstream: { api_key: 'root-key' } }, 'root');
    logger.child({ subsystem: 'gateway' }).info({ call: { token: 'child-token', id: 7 } }, 'child');
    const text = JSON.stringify(lines);
    expect(text).not.toContain('root-key');
    expect(text).not.toContain('child-token');
    expect(lines[0]).toMatchObject({ upstream: { api_key: CENSOR }, msg: 'root' });
    expect(lines[1]).toMatchObject({ subsystem: 'gateway', call: { token: CENSOR, id: 7 }, msg: 'child' });
  });
});
