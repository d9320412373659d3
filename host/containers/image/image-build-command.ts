import type Docker from 'dockerode';
import { ensureAgentImage, imageBuildModeSchema, type ImageBuildMode } from './image-ensure.ts';
import { errorMessage } from '../../errors/error-message.ts';

export const IMAGE_BUILD_USAGE = `Usage: carapace image build [--online | --offline] [--force]
  Bundles the agent and builds the image carapace-agent:<hash> when it does not exist yet.
  --online   build from container-agent/Dockerfile (pulls node:22-bookworm-slim)
  --offline  build from a local Debian root filesystem (debootstrap, needs root the first time)
  --force    rebuild the agent image even if its tag exists
  Default: auto (online when the base image is available or pullable, else offline);
  CARAPACE_IMAGE_BUILD=online|offline|auto sets the default.`;

export function parseImageBuildArgs(
  argv: readonly string[],
  defaultMode: ImageBuildMode = 'auto',
): { mode: ImageBuildMode; force: boolean; help: boolean } {
  let mode: ImageBuildMode = defaultMode;
  let force = false;
  let help = false;
  for (const arg of argv) {
    if (arg === '--online' || arg === '--offline') {
      mode = imageBuildModeSchema.parse(arg.slice(2));
    } else if (arg === '--force') {
      force = true;
    } else if (arg === '--help' || arg === '-h') {
      help = true;
    } else {
      throw new Error(`Unknown option ${arg}.\n${IMAGE_BUILD_USAGE}`);
    }
  }
  return { mode, force, help };
}

/** `carapace image build`: returns the process exit code. */
export async function runImageBuildCommand(options: {
  docker: Docker;
  projectRoot: string;
  argv: readonly string[];
  out: (line: string) => void;
  err: (line: string) => void;
  /** `[containers] image_build` from the config. */
  defaultMode?: ImageBuildMode;
  /** `[containers] keep_images` from the config. */
  keep?: number;
}): Promise<number> {
  let args: ReturnType<typeof parseImageBuildArgs>;
  try {
    args = parseImageBuildArgs(options.argv, options.defaultMode);
  } catch (error) {
    options.err(errorMessage(error));
    return 2;
  }
  if (args.help) {
    options.out(IMAGE_BUILD_USAGE);
    return 0;
  }
  const started = Date.now();
  try {
    const image = await ensureAgentImage({
      docker: options.docker,
      projectRoot: options.projectRoot,
      mode: args.mode,
      force: args.force,
      ...(options.keep ? { keep: options.keep } : {}),
      onProgress: (line) => options.err(line),
    });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    options.out(
      image.built ? `${image.tag} built (${image.mode}) in ${seconds} s` : `${image.tag} is up to date`,
    );
    return 0;
  } catch (error) {
    options.err(errorMessage(error));
    return 1;
  }
}
