/**
 * The http credential route of the gateway (issue 25) against a real recording HTTP API on loopback: the
 * host adds the secret, the container never sees it, and only what the allowlist and the trust matrix
 * allow goes through. The policy, scanner and audit log are the host's own; only the owner's answer and
 * the Cop's verdict are scripted.
 */
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { credentialSchema } from '../../../host/gateway/credential/credential-config.ts';
import { probeCredential } from '../../../host/gateway/credential/credential-status.ts';
import { startRecordingApi, type RecordingApi } from '../../fakes/recording-api.ts';
import {
  startCredentialGateway,
  type Asked,
  type CredentialGateway,
} from '../../helpers/credential-gateway.ts';

const VALUE = 'notes-api-value-7f3a9c2e51d84b06';
const OTHER_HELD = 'sk-live-host-held-provider-key-0123456789';

let api: RecordingApi;
let h: CredentialGateway;

afterEach(async () => {
  await h?.close();
  await api?.close();
});

async function setUp(
  opts: { credential?: Record<string, unknown>; owner?: (a: Asked) => boolean; copFlags?: boolean } = {},
) {
  api = await startRecordingApi(`Bearer ${VALUE}`);
  h = await startCredentialGateway({
    config: {
      credentials: {
        notes: {
          kind: 'http',
          value_env: 'NOTES_KEY',
          base_url: `${api.url}/api`,
          allow: ['GET /notes/**', 'POST /notes/*/items'],
          public_source: false,
          secret_data: false,
          public_sink: true,
          dangerous_writes: false,
          ...opts.credential,
        },
        elsewhere: { kind: 'http', value_env: 'NOTES_KEY', base_url: `${api.url}/x`, allow: ['GET /**'] },
      },
      groups: { family: { credentials: ['notes'] } },
    },
    secrets: { NOTES_KEY: VALUE, PROVIDER_KEY: OTHER_HELD },
    ...(opts.owner ? { owner: opts.owner } : {}),
    ...(opts.copFlags !== undefined ? { copFlags: opts.copFlags } : {}),
  });
}

async function call(
  key: string,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${h.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

function rawGet(key: string, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: h.port,
        path: `/credentials${path}`,
        headers: { authorization: `Bearer ${key}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: '' }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const requestRows = (h: CredentialGateway) => h.audit().filter((r) => r.operation.endsWith('.request'));

describe('the http credential route', () => {
  it('adds the secret to an allowed request and hands the answer back, with one audit row per request', async () => {
    await setUp();
    const { runId, keys } = h.startRun();
    const res = await call(keys.credentialKey, 'GET', '/notes/notes/42?fields=title', undefined, {
      'x-http-method-override': 'DELETE',
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ ok: true, method: 'GET', url: '/api/notes/42?fields=title' });
    expect(api.requests[0]?.headers.authorization).toBe(`Bearer ${VALUE}`);
    // A method override would let a GET through the allowlist as a DELETE.
    expect(api.requests[0]?.headers['x-http-method-override']).toBeUndefined();
    // The run key never reaches the upstream.
    expect(JSON.stringify(api.requests)).not.toContain(keys.credentialKey);
    const rows = requestRows(h);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ runId, operation: 'credential.notes.request', decision: 'forwarded' });
    expect(JSON.parse(rows[0]?.details ?? '{}')).toEqual({
      method: 'GET',
      path: '/notes/42?fields=title',
      status: 200,
      bytes: Buffer.byteLength(res.text),
    });
    expect(h.audit().find((r) => r.operation === 'credential.notes')).toMatchObject({
      decision: 'allowed',
      reason: 'a read',
    });
  });

  it('strips the secret from echoed headers and from error bodies', async () => {
    await setUp();
    const { keys } = h.startRun();
    const echoed = await call(keys.credentialKey, 'GET', '/notes/notes/echo');
    expect(echoed.status).toBe(200);
    expect(echoed.text).not.toContain(VALUE);
    expect(JSON.parse(echoed.text)).toMatchObject({ headers: { authorization: '[redacted]' } });
    expect(echoed.headers.get('x-echo-auth')).toBe('[redacted]');
    const failed = await call(keys.credentialKey, 'GET', '/notes/notes/fail');
    expect(failed.status).toBe(500);
    expect(failed.text).toBe('internal error while handling token [redacted]');
  });

  it('refuses a path or method outside the allowlist, a climbing path and a credential the group lacks, before the upstream hears of it', async () => {
    await setUp();
    const { keys } = h.startRun();
    const refused = [
      await call(keys.credentialKey, 'GET', '/notes/admin/users'),
      await call(keys.credentialKey, 'DELETE', '/notes/notes/42'),
      await call(keys.credentialKey, 'POST', '/notes/notes/42/items/extra', '{}'),
      // fetch would resolve the escaped dots itself; a raw request sends them as written.
      await rawGet(keys.credentialKey, '/notes/notes/%2e%2e/%2e%2e/admin'),
      await call(keys.credentialKey, 'GET', '/elsewhere/anything'),
    ];
    expect(refused.map((r) => r.status)).toEqual([403, 403, 403, 400, 403]);
    expect(refused[0]?.text).toContain('GET /admin/users is not on the allowlist of credential notes');
    expect(api.requests).toEqual([]);
    expect(requestRows(h).map((r) => r.decision)).toEqual([
      'refused',
      'refused',
      'refused',
      'refused',
      'refused',
    ]);
  });

  it('refuses every request once the run has ended, and never takes the LLM key for a credential key or the other way round', async () => {
    await setUp();
    const { keys } = h.startRun();
    expect((await call(keys.key, 'GET', '/notes/notes/1')).status).toBe(401);
    const llm = await fetch(`${h.url.replace('/credentials', '')}/v1/models`, {
      headers: { authorization: `Bearer ${keys.credentialKey}` },
    });
    expect(llm.status).toBe(401);
    expect((await call(keys.credentialKey, 'GET', '/notes/notes/1')).status).toBe(200);
    keys.revoke();
    const after = await call(keys.credentialKey, 'GET', '/notes/notes/1');
    expect(after.status).toBe(401);
    expect(after.text).toContain('the run this key belonged to has ended');
    expect(api.requests).toHaveLength(1);
  });

  it('asks the owner before a POST whose body holds a secret the host holds, and sends nothing when denied', async () => {
    await setUp({ owner: () => false });
    const { keys } = h.startRun();
    const res = await call(
      keys.credentialKey,
      'POST',
      '/notes/notes/7/items',
      JSON.stringify({ text: `key ${OTHER_HELD}` }),
    );
    expect(res.status).toBe(403);
    expect(res.text).toContain('not approved by the owner (the request contains a secret (held-secret');
    expect(h.asked).toEqual([expect.objectContaining({ operation: 'credential.notes' })]);
    expect(api.requests).toEqual([]);
  });

  it("sends a clean run's POST, and sends a corrupted run's POST to the Cop, whose flag goes to the owner", async () => {
    await setUp({ copFlags: true, owner: () => true });
    const clean = h.startRun();
    expect(
      (await call(clean.keys.credentialKey, 'POST', '/notes/notes/7/items', '{"text":"milk"}')).status,
    ).toBe(200);
    expect(h.copAsked).toEqual([]);
    const corrupted = h.startRun('family', { corruption: true, secret: false });
    const res = await call(corrupted.keys.credentialKey, 'POST', '/notes/notes/7/items', '{"text":"eggs"}');
    expect(res.status).toBe(200);
    expect(h.copAsked).toHaveLength(1);
    expect(h.asked[0]?.reason).toContain('the Cop flagged it');
    expect(api.requests.map((r) => r.body)).toEqual(['{"text":"milk"}', '{"text":"eggs"}']);
  });

  it('taints the run by what the credential reads, left-out properties counting as true', async () => {
    await setUp({ credential: { public_source: undefined, secret_data: undefined } });
    const { runId, keys } = h.startRun();
    expect(h.taintOf(runId)).toEqual({ corruption: false, secret: false });
    expect((await call(keys.credentialKey, 'GET', '/notes/notes/1')).status).toBe(200);
    expect(h.taintOf(runId)).toEqual({ corruption: true, secret: true });
  });

  it('streams a large answer through without holding it', async () => {
    await setUp({ credential: { allow: ['GET /big/*'] } });
    const { keys } = h.startRun();
    const res = await fetch(`${h.url}/notes/big/${8 * 1024 * 1024}`, {
      headers: { authorization: `Bearer ${keys.credentialKey}` },
    });
    let bytes = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
    expect(bytes).toBe(8 * 1024 * 1024);
  });
});

describe("doctor's probe of a credential", () => {
  it('says whether the upstream answers with the value, and never shows the value', async () => {
    api = await startRecordingApi(`Bearer ${VALUE}`);
    const c = credentialSchema.parse({
      kind: 'http',
      value_env: 'K',
      base_url: `${api.url}/api`,
      allow: ['GET /**'],
    });
    expect(await probeCredential(c, VALUE)).toEqual({ ok: true, text: `${api.url}/api answered HTTP 200` });
    expect(await probeCredential(c, 'wrong-value-123')).toEqual({
      ok: false,
      text: `${api.url}/api refused the value (HTTP 401)`,
    });
    expect(await probeCredential(c, undefined)).toEqual({ ok: false, text: 'no value (K is not set)' });
    const gone = credentialSchema.parse({ ...c, base_url: 'http://127.0.0.1:9/api' });
    const probe = await probeCredential(gone, VALUE);
    expect(probe.ok).toBe(false);
    expect(probe.text).toContain('unreachable');
    expect(probe.text).not.toContain(VALUE);
  });
});
