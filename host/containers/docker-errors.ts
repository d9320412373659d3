/** Status code of an error thrown by dockerode/docker-modem, if it carries one. */
export function dockerStatusCode(error: unknown): number | undefined {
  if (typeof error === 'object' && error !== null && 'statusCode' in error) {
    const code = (error as { statusCode: unknown }).statusCode;
    return typeof code === 'number' ? code : undefined;
  }
  return undefined;
}

/** 404: the object is gone (e.g. an AutoRemove container removed itself). */
export function isDockerNotFound(error: unknown): boolean {
  return dockerStatusCode(error) === 404;
}

/**
 * 304 (already stopped) or 409 (not running, removal already in progress): the container is
 * on its way out without us, which is what a stop or cleanup wanted anyway.
 */
export function isDockerAlreadyGone(error: unknown): boolean {
  const code = dockerStatusCode(error);
  return code === 404 || code === 409 || code === 304;
}
