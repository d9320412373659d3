import { CleanRoomError } from '../security/policies/admin-clean-room.ts';
import { checkConfigText, type CheckedConfigText } from './load-config.ts';
import { assertStartableConfig, createHostServiceRegistry } from './service-grants.ts';

export interface ReloadCheckDeps {
  configFile: string;
  exampleFile: string;
  /** The admin group's id in the running host's database. */
  adminGroupId(): string;
}

/**
 * The reloader's check of a changed config.toml: like a start, the schema first, then the admin clean room
 * a start refuses to run without (a refusal is a problem in `groups`, not a crash of the reload).
 */
export function createReloadCheck({ configFile, exampleFile, adminGroupId }: ReloadCheckDeps) {
  return (text: string): CheckedConfigText => {
    const checked = checkConfigText(configFile, text, exampleFile);
    if (!checked.ok) return checked;
    try {
      const c = checked.config;
      assertStartableConfig(
        c,
        createHostServiceRegistry(() => c),
        adminGroupId(),
      );
    } catch (err) {
      if (!(err instanceof CleanRoomError)) throw err;
      return { ok: false, problems: [{ file: configFile, key: 'groups', problem: err.message }] };
    }
    return checked;
  };
}
