import { useEffect, useState } from "preact/hooks";
import { t } from "../i18n/i18n.ts";
import { KnowledgeBasePages } from "../kb/kb-pages.tsx";
import { matchPath, useLocation } from "../router.tsx";
import { installationName } from "../ui/installation.ts";
import { ArchivedPage } from "./archived-page.tsx";
import { ConversationView } from "./conversation-view.tsx";
import { SettingsPage } from "./settings-page.tsx";
import { Sidebar } from "./sidebar.tsx";

/** The signed-in screens: the sidebar (a drawer on a phone) and the screen the address names. */
export function ChatLayout(props: { path: string }) {
  const { path } = props;
  const [drawerOpen, setDrawerOpen] = useState(false);
  // Any navigation closes the drawer on a phone, also a link to the screen already shown.
  const { visit } = useLocation();
  useEffect(() => setDrawerOpen(false), [visit]);

  return (
    <div class={drawerOpen ? "shell drawer-open" : "shell"}>
      <a class="skip-link" href="#main">
        {t("common.skipToContent")}
      </a>
      <Sidebar path={path} id="sidebar" />
      <button
        type="button"
        class="drawer-backdrop"
        tabIndex={-1}
        aria-hidden="true"
        onClick={() => setDrawerOpen(false)}
      />
      <div class="workspace">
        <header class="topbar">
          <button
            type="button"
            class="icon-button menu-button"
            aria-label={t("chat.menu")}
            aria-controls="sidebar"
            aria-expanded={drawerOpen}
            onClick={() => setDrawerOpen(!drawerOpen)}
          >
            <span aria-hidden="true">☰</span>
          </button>
          <span class="brand">{installationName()}</span>
        </header>
        <main id="main" class="screen" tabIndex={-1}>
          {screenOf(path)}
        </main>
      </div>
    </div>
  );
}

function screenOf(path: string) {
  if (path === "/archived") return <ArchivedPage />;
  if (path === "/settings") return <SettingsPage />;
  if (path === "/kb") return <KnowledgeBasePages slug={undefined} />;
  const kb = matchPath("/kb/:slug", path);
  if (kb) return <KnowledgeBasePages slug={kb.slug} />;
  const conversation = matchPath("/c/:id", path);
  return <ConversationView id={conversation?.id} />;
}
