/** Characters as a person counts them (code points, so an emoji is one). */
export function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
