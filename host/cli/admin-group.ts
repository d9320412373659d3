import { hostStatus } from '../channels/local/local-api.ts';
import { LOCAL_CHANNEL } from '../channels/local/local-names.ts';
import type { LocalClient } from '../channels/local/local-client.ts';

/**
 * The console's admin group, as the running host has it: CLI defaults follow the admin flag, never a
 * fixed id. Throws HostUnreachable when no host runs.
 */
export async function consoleAdminGroup(client: LocalClient): Promise<string> {
  const status = hostStatus.parse(await client.getJson('/v1/status'));
  const admin = status.groups.find((g) => g.admin && g.channel === LOCAL_CHANNEL);
  if (!admin) throw new Error('the running host has no admin group on the console; see carapace groups list');
  return admin.id;
}
