/** Usage lines shared by the command table (help) and the commands' own errors; a leaf, so help loads nothing. */
export const sendUsage = 'carapace send --group <id> [--timeout <seconds>] ("<text>" | - to read stdin)';

export const approvalUsage = `carapace approve <id>
carapace deny <id>
carapace pending`;

export const groupsUsage = `carapace groups add <id> --channel local|telegram|whatsapp|<channel>.<account> [--chat <chat id>] [--name <name>] [--network full|gateway]
carapace groups list
carapace groups remove <id>
carapace groups untaint <id> [--keep <task id>]... [--cancel <task id>]...`;

export const whatsappUsage =
  'carapace whatsapp login [--account <name>] [--phone <digits with country code>] [--timeout <seconds>] | carapace whatsapp logout [--account <name>]';

export const serviceUsage =
  'carapace service install [--user | --system [--run-as <user>]] | uninstall [--user | --system]';

export const logsUsage = 'carapace logs [-f] [-n <lines>] [--json]';

export const configUsage = `carapace config get <key>
carapace config set <key> <TOML value>
carapace config diff
carapace config history
carapace config rollback [n]`;

export const stopUsage = 'carapace stop [--timeout <seconds>]';

export const startUsage = 'carapace start [--no-console | --detach]';

export const webUsage = `carapace web login [--timeout <seconds>]
carapace web sessions [--json]
carapace web revoke <id> | --all`;

export const memoryUsage = `carapace memory search <group> <words…> [--sender <id or name>] [--since <time>] [--until <time>] [--limit N] [--json]
carapace memory list <group> [--json]
carapace memory show note:<id> [--json]
carapace memory forget <group> note:<id>|message:<id>
carapace memory reindex`;
