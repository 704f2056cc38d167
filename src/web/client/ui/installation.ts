/** The installation's name, as the page was served with it. */
export function installationName(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="application-name"]')?.content || "Zona";
}
