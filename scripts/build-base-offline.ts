// Builds (or finds cached) the offline base image carapace-agent-base:<hash> with debootstrap.
// Needs root. Usage: node --import tsx scripts/build-base-offline.ts [--force]
import Docker from 'dockerode';
import { ensureOfflineBase } from '../host/containers/image/image-base-offline.ts';

const force = process.argv.includes('--force');
const started = Date.now();
try {
  const result = await ensureOfflineBase({
    docker: new Docker(),
    force,
    onProgress: (line) =>
      console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`),
  });
  console.log(
    result.built ? `built ${result.tag} (${result.id})` : `${result.tag} already exists (${result.id})`,
  );
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
