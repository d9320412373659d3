#!/usr/bin/env node
// Entry point of the `carapace` CLI. The host is written in TypeScript and run through tsx,
// so there is no separate build step between editing and running.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../host/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
