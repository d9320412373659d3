import crypto from 'node:crypto';
import Docker from 'dockerode';
import { createMcpServerContainers } from '../../containers/run/mcp-server-container.ts';
import { loadSecrets } from '../../config/secrets.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { probeCredential } from '../../gateway/credential/credential-status.ts';
import { createMcpServices, mcpServerNames } from '../../services/mcp/mcp-services.ts';
import type { Check } from './doctor-check.ts';

/** One check over several parts (servers, credentials): each part's line, and `fix` when any failed. */
function oneLinePerPart(name: string, lines: { ok: boolean; text: string }[], fix: string) {
  const failed = lines.some((l) => !l.ok);
  return { name, ok: !failed, detail: lines.map((l) => l.text).join('; '), ...(failed ? { fix } : {}) };
}

/** How long doctor waits for one MCP server to start and list its tools. */
const DOCTOR_TIMEOUT_MS = 20_000;

/**
 * Starts every MCP server `[services]` declares, as the host would, lists its tools and stops it again:
 * a server that cannot start fails its group's runs quietly (its tools are simply missing), so doctor says
 * so. Its stderr stays out of the output; the error says what went wrong.
 */
export const checkMcpServers: Check = async (ctx) => {
  const config = ctx.config();
  const names = mcpServerNames(config.services);
  if (names.length === 0) return { name: 'MCP servers', ok: true, detail: 'none declared in [services]' };
  const secrets = loadSecrets({ envFile: ctx.paths.envFile, env: ctx.io.env });
  const mcp = createMcpServices({
    services: () => config.services,
    secret: (name) => secrets.get(name),
    logger: { info: () => undefined, warn: () => undefined },
    // Its own instance: a running host's containers are not doctor's, and doctor's go when it closes.
    containers: createMcpServerContainers({
      docker: new Docker(),
      hostInstanceId: `doctor-${crypto.randomUUID()}`,
      dataDir: ctx.paths.dataDir,
      configDir: ctx.paths.configDir,
    }),
    restart: { baseMs: 1000, maxInARow: 1, coolDownMs: DOCTOR_TIMEOUT_MS },
  });
  try {
    const lines = await Promise.all(
      names.map(async (name) => {
        try {
          const started = mcp.connection(name)!.start();
          await Promise.race([
            started,
            new Promise((_, reject) =>
              setTimeout(
                () => reject(new Error(`no answer in ${DOCTOR_TIMEOUT_MS} ms`)),
                DOCTOR_TIMEOUT_MS,
              ).unref(),
            ),
          ]);
          const status = mcp.connection(name)!.status();
          return { ok: true, text: `${name} (${status.type}) reachable, ${status.tools ?? 0} tools` };
        } catch (error) {
          return { ok: false, text: `${name} unreachable: ${errorMessage(error)}` };
        }
      }),
    );
    return oneLinePerPart(
      'MCP servers',
      lines,
      `check the command, image, url and variables of those [services.<name>] in ${ctx.paths.configFile}`,
    );
  } finally {
    await mcp.close();
  }
};

/**
 * Asks each credential's upstream with its value (a git remote's refs, an http API's base URL), as a run
 * would: a missing value, an upstream that refuses it or cannot be reached fails its group's requests, so
 * doctor names it. The value is never shown.
 */
export const checkCredentials: Check = async (ctx) => {
  const config = ctx.config();
  const names = Object.keys(config.credentials);
  if (names.length === 0) return { name: 'credentials', ok: true, detail: 'none declared in [credentials]' };
  const secrets = loadSecrets({ envFile: ctx.paths.envFile, env: ctx.io.env });
  const lines = await Promise.all(
    names.map(async (name) => {
      const c = config.credentials[name];
      if (c === undefined) return { ok: false, text: name };
      const probe = await probeCredential(c, secrets.get(c.value_env));
      return { ok: probe.ok, text: `${name} (${c.kind}): ${probe.text}` };
    }),
  );
  return oneLinePerPart(
    'credentials',
    lines,
    `set each value_env in ${ctx.paths.envFile} and check the base_url or remote of those [credentials.<name>] in ${ctx.paths.configFile}`,
  );
};
