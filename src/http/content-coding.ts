/** Whether a request's Content-Encoding names a coding to undo (body-parser reads none, empty and `identity` alike). */
export function isEncoded(contentEncoding: string | undefined): boolean {
  const coding = contentEncoding?.trim().toLowerCase();
  return coding !== undefined && coding !== '' && coding !== 'identity';
}
