import "./kb.css";
import { KnowledgeBasePage } from "./kb-base-page.tsx";
import { KnowledgeBaseList } from "./kb-list-page.tsx";

/** The knowledge-base screens: the list (`/kb`) and one base (`/kb/{slug}`). */
export function KnowledgeBasePages(props: { slug: string | undefined }) {
  if (props.slug === undefined) return <KnowledgeBaseList />;
  // A new page for another base: its uploads, answers and polling are its own.
  return <KnowledgeBasePage key={props.slug} slug={props.slug} />;
}
