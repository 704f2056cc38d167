import { t } from "../i18n/i18n.ts";

/** The knowledge-base screens: the list (`/kb`) and one base (`/kb/{slug}`). */
export function KnowledgeBasePages(props: { slug: string | undefined }) {
  void props.slug;
  return (
    <section class="page">
      <h1>{t("kb.title")}</h1>
    </section>
  );
}
