import { z } from 'zod';
import { mcpServerFields, mcpServerProblems, type ToolOverride } from './mcp/mcp-config.ts';

/**
 * What a host service may do to a run's data, as the security policy reads it (DESIGN.md, "Security
 * policy"). `true` means the service does it, `false` that it does not, `"forbidden"` that no run may
 * use it at all.
 */
export type TrustValue = boolean | 'forbidden';

export const TRUST_PROPERTIES = ['public_source', 'secret_data', 'public_sink', 'dangerous_writes'] as const;
export type TrustProperty = (typeof TRUST_PROPERTIES)[number];

export type ServiceTrust = Record<TrustProperty, TrustValue>;

/** What a service that nobody declared counts as: everything, so the policy treats it as worst case. */
export const UNDECLARED_TRUST: Readonly<ServiceTrust> = Object.freeze({
  public_source: true,
  secret_data: true,
  public_sink: true,
  dangerous_writes: true,
});

export const SERVICE_NAME_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

const trustValueSchema = z.union([z.boolean(), z.literal('forbidden')], {
  error: 'must be true, false or "forbidden"',
});

/**
 * One `[services.<name>]` section: the trust properties (left out = `true`, fail closed) and, with a
 * `type`, the MCP server that provides the service (mcp/mcp-config.ts).
 */
export const serviceTrustDeclarationSchema = z
  .object({
    public_source: trustValueSchema.optional(),
    secret_data: trustValueSchema.optional(),
    public_sink: trustValueSchema.optional(),
    dangerous_writes: trustValueSchema.optional(),
    ...mcpServerFields,
  })
  .strict()
  .superRefine((declared, ctx) => {
    for (const problem of mcpServerProblems(declared))
      ctx.addIssue({ code: 'custom', path: [problem.path], message: problem.message });
  });

export type ServiceTrustDeclaration = z.output<typeof serviceTrustDeclarationSchema>;

/** The `[services]` table of config.toml: service name → its declaration. */
export const servicesConfigSchema = z
  .record(z.string(), serviceTrustDeclarationSchema)
  .superRefine((services, ctx) => {
    // Checked here rather than as a key schema so the owner reads which name is wrong and why.
    for (const name of Object.keys(services)) {
      if (!SERVICE_NAME_PATTERN.test(name)) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `"${name}" is not a service name; a service name is a lowercase identifier such as "web_fetch"`,
        });
      }
    }
  })
  .default({});

export type ServicesConfig = z.output<typeof servicesConfigSchema>;

const RANK: Record<string, number> = { false: 0, true: 1, forbidden: 2 };

/** The stricter of two values: false < true < "forbidden". */
export function stricterTrust(a: TrustValue, b: TrustValue): TrustValue {
  return (RANK[String(a)] ?? 2) >= (RANK[String(b)] ?? 2) ? a : b;
}

function ownValue<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

/**
 * The trust the policy applies to `name`.
 *
 * - A built-in service starts from its own declaration; the owner's `[services.<name>]` can only make a
 *   property stricter (e.g. `"forbidden"`), never weaker, so a config edit cannot switch off the taint
 *   that web content must set.
 * - Any other service has only the owner's declaration; whatever it leaves out counts as `true`.
 * - A service declared nowhere counts as all `true`.
 */
export function effectiveTrust(
  name: string,
  config: ServicesConfig,
  builtinDefaults: Readonly<Record<string, Partial<ServiceTrust>>>,
): ServiceTrust {
  const builtin = ownValue(builtinDefaults, name);
  const declared = ownValue(config, name);
  const result = { ...UNDECLARED_TRUST };
  for (const property of TRUST_PROPERTIES) {
    const declaredValue = declared?.[property];
    if (builtin !== undefined) {
      const base = builtin[property] ?? true;
      result[property] = declaredValue === undefined ? base : stricterTrust(base, declaredValue);
    } else {
      result[property] = declaredValue ?? true;
    }
  }
  return result;
}

/**
 * A tool's trust: the service's, with the owner's `[services.<name>.tools.<tool>]` values in place of the
 * service's where given. Only for services the owner declares whole (MCP servers), so a tool override
 * cannot loosen a built-in service.
 */
export function toolTrust(serviceTrust: ServiceTrust, override: ToolOverride | undefined): ServiceTrust {
  const result = { ...serviceTrust };
  for (const property of TRUST_PROPERTIES) {
    const value = override?.[property];
    if (value !== undefined) result[property] = value;
  }
  return result;
}

/** The properties that bar every use of the service. */
export function forbiddenProperties(trust: ServiceTrust): TrustProperty[] {
  return TRUST_PROPERTIES.filter((property) => trust[property] === 'forbidden');
}
