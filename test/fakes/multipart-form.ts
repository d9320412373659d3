import { Request } from 'undici';

/**
 * A multipart body as the fakes' servers receive it, read with the project's own undici: Node 22's
 * bundled undici refuses the multipart grammY sends ("Failed to parse body as FormData") where Node 24's
 * reads it, and a fake must read what the real client sends on every Node the project supports.
 */
export async function readMultipart(contentType: string, raw: Buffer): Promise<FormData> {
  return (await new Request('http://fake/', {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: raw,
  }).formData()) as FormData;
}
