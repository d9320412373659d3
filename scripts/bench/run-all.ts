/**
 * `npm run bench`: runs every benchmark in this folder and prints its figures. Each benchmark measures
 * its own baseline in the same run and reports medians and ratios against it. Benchmarks that need a
 * Docker engine say so and are skipped when none answers.
 */
import { printFigures } from './stats.ts';

type Bench = { title: string; module: string; fn: string };

const BENCHES: Bench[] = [
  { title: 'CLI start-up CPU vs node -e 0', module: './bench-cli-startup.ts', fn: 'benchCliStartup' },
  { title: 'router overhead (ingest → runner)', module: './bench-router.ts', fn: 'benchRouter' },
  {
    title: 'Telegram channel overhead (getUpdates answer → runner) vs a bare poll loop',
    module: './bench-telegram.ts',
    fn: 'benchTelegram',
  },
  {
    title: 'WhatsApp channel (upsert → runner vs a bare listener; reconnect after a server restart)',
    module: './bench-whatsapp.ts',
    fn: 'benchWhatsApp',
  },
  {
    title: 'WhatsApp media download (10 MiB: fetch, MAC, decrypt, checksum) vs a plain fetch',
    module: './bench-whatsapp-media.ts',
    fn: 'benchWhatsAppMedia',
  },
  {
    title: 'cost with a month of history (1,000 groups at 10/50/100 msg/s) vs an empty database',
    module: './bench-history.ts',
    fn: 'benchHistory',
  },
  {
    title: 'memory search on a seeded month of 1,000 groups; ingest with the index vs without; growth',
    module: './bench-memory.ts',
    fn: 'benchMemory',
  },
  {
    title: 'web console: reply p50 with a live page open vs none; 1,000 audit rows server-side',
    module: './bench-web-console.ts',
    fn: 'benchWebConsole',
  },
  { title: 'bash gate classification', module: './bench-bash-gate.ts', fn: 'benchBashGate' },
  { title: 'security.bash_check round trip', module: './bench-bash-check.ts', fn: 'benchBashCheck' },
  { title: 'bash.ran report on a local command', module: './bench-bash-report.ts', fn: 'benchBashReport' },
  {
    title: 'commands and the agent as separate principals',
    module: './bench-principals.ts',
    fn: 'benchPrincipals',
  },
  { title: 'secret scanning', module: './bench-secret-scan.ts', fn: 'benchSecretScan' },
  {
    title: 'private-text check per payload and per run vs the secret scan',
    module: './bench-private-text.ts',
    fn: 'benchPrivateText',
  },
  { title: 'MCP service call, host overhead', module: './bench-mcp-call.ts', fn: 'benchMcpCall' },
  {
    title: 'credential route vs direct',
    module: './bench-credential-route.ts',
    fn: 'benchCredentialRoute',
  },
  { title: 'LLM gateway vs direct', module: './bench-gateway.ts', fn: 'benchGateway' },
  {
    title: 'media in: a 10 MiB file vs a bare fetch and write; transcription through the gateway vs direct',
    module: './bench-media.ts',
    fn: 'benchMedia',
  },
  { title: 'container run vs bare docker run', module: './bench-container.ts', fn: 'benchContainer' },
  {
    title: 'agent: run.start → first LLM request while waiting pre-started, vs node -e 0',
    module: './bench-agent-start.ts',
    fn: 'benchAgentStart',
  },
  { title: 'cold reply latency vs bare docker run', module: './bench-cold-reply.ts', fn: 'benchColdReply' },
  {
    title: 'Kubernetes runner on the fake API server vs the Docker runner and a bare docker run',
    module: './bench-kube-runner.ts',
    fn: 'benchKubeRunner',
  },
];

const only = process.argv.slice(2);
let failed = 0;
for (const b of BENCHES) {
  if (only.length && !only.some((o) => b.module.includes(o))) continue;
  try {
    const mod = (await import(b.module)) as Record<string, () => Promise<Record<string, number | string>>>;
    const fn = mod[b.fn];
    if (!fn) throw new Error(`${b.module} does not export ${b.fn}`);
    printFigures(b.title, await fn());
  } catch (err) {
    failed += 1;
    process.stdout.write(`\n${b.title}\n  FAILED: ${(err as Error).message}\n`);
  }
}
process.exitCode = failed ? 1 : 0;
