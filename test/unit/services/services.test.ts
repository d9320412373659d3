import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RPC_ERROR_CODES } from '../../../container-agent/src/protocol.ts';
import { RpcError } from '../../../container-agent/src/rpc/errors.ts';
import { DomainError } from '../../../host/errors/domain-error.ts';
import { toRpcError } from '../../../host/ipc/domain-error-codes.ts';
import { invokeService } from '../../../host/services/service-invoke.ts';
import {
  createServiceRegistry,
  ServiceError,
  type HostService,
} from '../../../host/services/service-registry.ts';
import {
  effectiveTrust,
  forbiddenProperties,
  servicesConfigSchema,
  stricterTrust,
  UNDECLARED_TRUST,
  type ServiceTrust,
} from '../../../host/services/service-trust.ts';
import { WEB_FETCH_TRUST } from '../../../host/services/web-fetch.ts';

const builtins = { web_fetch: WEB_FETCH_TRUST };

describe('servicesConfigSchema', () => {
  it('accepts an absent section, partial declarations and "forbidden"', () => {
    expect(servicesConfigSchema.parse(undefined)).toEqual({});
    expect(
      servicesConfigSchema.parse({
        calendar: { secret_data: true, public_sink: false },
        web_fetch: { public_sink: 'forbidden' },
      }),
    ).toEqual({
      calendar: { secret_data: true, public_sink: false },
      web_fetch: { public_sink: 'forbidden' },
    });
  });

  it.each([
    [{ calendar: { public_sorce: true } }, /public_sorce/],
    [{ calendar: { secret_data: 'yes' } }, /true, false or "forbidden"/],
    [{ calendar: { secret_data: 1 } }, /true, false or "forbidden"/],
    [{ 'Bad-Name': {} }, /lowercase identifier/],
    [{ calendar: true }, /expected object/],
  ])('rejects %j', (input, message) => {
    const result = servicesConfigSchema.safeParse(input);
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.message).join('\n')).toMatch(message);
  });
});

describe('effectiveTrust', () => {
  it('counts a service declared nowhere as all true', () => {
    expect(effectiveTrust('mystery', {}, builtins)).toEqual(UNDECLARED_TRUST);
  });

  it('counts the properties a config declaration leaves out as true', () => {
    const config = servicesConfigSchema.parse({
      calendar: { public_source: false, public_sink: 'forbidden' },
    });
    expect(effectiveTrust('calendar', config, builtins)).toEqual({
      public_source: false,
      secret_data: true,
      public_sink: 'forbidden',
      dangerous_writes: true,
    });
  });

  it('uses a built-in service’s own declaration when the config says nothing', () => {
    expect(effectiveTrust('web_fetch', {}, builtins)).toEqual(WEB_FETCH_TRUST);
  });

  it('lets the owner tighten a built-in service but never loosen it', () => {
    const config = servicesConfigSchema.parse({
      web_fetch: {
        public_source: false,
        secret_data: true,
        public_sink: 'forbidden',
        dangerous_writes: false,
      },
    });
    expect(effectiveTrust('web_fetch', config, builtins)).toEqual({
      public_source: true, // web content stays a public source: the taint cannot be switched off
      secret_data: true,
      public_sink: 'forbidden',
      dangerous_writes: false,
    });
  });

  it('treats a property a built-in leaves out as true', () => {
    const partial: Record<string, Partial<ServiceTrust>> = { notes: { public_source: false } };
    expect(effectiveTrust('notes', {}, partial)).toEqual({ ...UNDECLARED_TRUST, public_source: false });
  });

  it('does not read names off Object.prototype', () => {
    expect(effectiveTrust('constructor', {}, builtins)).toEqual(UNDECLARED_TRUST);
    expect(effectiveTrust('__proto__', {}, {})).toEqual(UNDECLARED_TRUST);
  });

  it('orders values false < true < "forbidden"', () => {
    expect(stricterTrust(false, true)).toBe(true);
    expect(stricterTrust('forbidden', true)).toBe('forbidden');
    expect(stricterTrust(false, false)).toBe(false);
    expect(forbiddenProperties({ ...UNDECLARED_TRUST, public_sink: 'forbidden' })).toEqual(['public_sink']);
  });
});

function echoService(overrides: Partial<HostService<{ word: string }>> = {}): HostService<{ word: string }> {
  return {
    name: 'echo',
    builtinTrust: { public_source: false, secret_data: false, public_sink: false, dangerous_writes: false },
    paramsSchema: z.object({ word: z.string().max(10) }).strict(),
    call: async (params, context) => ({ said: params.word, runId: context.runId, groupId: context.groupId }),
    ...overrides,
  };
}

const context = { signal: new AbortController().signal, runId: 7, groupId: 'family' };

async function rpcError(promise: Promise<unknown>): Promise<RpcError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  // The refusal as the container receives it: the domain error given its code by host/ipc.
  expect(error).toBeInstanceOf(DomainError);
  const mapped = toRpcError(error);
  expect(mapped).toBeInstanceOf(RpcError);
  return mapped as RpcError;
}

describe('createServiceRegistry', () => {
  it('looks services up by name and nothing else', () => {
    const echo = echoService();
    const registry = createServiceRegistry({ echo });
    expect(registry.lookup('echo')).toBe(echo);
    expect(registry.lookup('web_fetch')).toBeUndefined();
    expect(registry.lookup('constructor')).toBeUndefined();
    expect(registry.lookup('__proto__')).toBeUndefined();
    expect(registry.names()).toEqual(['echo']);
    expect(registry.builtinTrust()).toEqual({ echo: echo.builtinTrust });
  });

  it('refuses a service registered under another name', () => {
    expect(() => createServiceRegistry({ other: echoService() })).toThrow(/"other" calls itself "echo"/);
  });
});

describe('invokeService', () => {
  const registry = createServiceRegistry({
    echo: echoService(),
    refuser: echoService({
      name: 'refuser',
      call: async () => {
        throw new ServiceError('refused', 'no, that address is private');
      },
    }),
    crasher: echoService({
      name: 'crasher',
      call: async () => {
        throw new TypeError('boom');
      },
    }),
  });

  it('validates params and passes the run identity', async () => {
    expect(await invokeService(registry, 'echo', { word: 'hi' }, context)).toEqual({
      said: 'hi',
      runId: 7,
      groupId: 'family',
    });
  });

  it('answers an unknown service with invalid params, naming the known ones', async () => {
    const error = await rpcError(invokeService(registry, 'nope', {}, context));
    expect(error.code).toBe(RPC_ERROR_CODES.invalidParams);
    expect(error.message).toBe('there is no service "nope"; available: crasher, echo, refuser');
  });

  it('answers invalid params with the problem', async () => {
    const error = await rpcError(invokeService(registry, 'echo', { word: 'far too long a word' }, context));
    expect(error.code).toBe(RPC_ERROR_CODES.invalidParams);
    expect(error.message).toMatch(/^invalid params for echo: word: /);
    expect((await rpcError(invokeService(registry, 'echo', { word: 'a', admin: true }, context))).code).toBe(
      RPC_ERROR_CODES.invalidParams,
    );
  });

  it('maps a refusal to a typed denial and other failures to internal errors', async () => {
    const refused = await rpcError(invokeService(registry, 'refuser', { word: 'x' }, context));
    expect(refused.code).toBe(RPC_ERROR_CODES.denied);
    expect(refused.isDenial).toBe(true);
    expect(refused.message).toBe('no, that address is private');
    const crashed = await rpcError(invokeService(registry, 'crasher', { word: 'x' }, context));
    expect(crashed.code).toBe(RPC_ERROR_CODES.internal);
    expect(crashed.isDenial).toBe(false);
    expect(crashed.message).toBe('crasher failed: boom');
  });
});
