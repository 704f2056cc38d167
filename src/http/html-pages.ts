const TITLES: Record<number, string> = {
  413: "Request Entity Too Large",
  504: "Gateway Timeout",
};

/** The HTML page sent for the errors whose body is not JSON (413, 504). */
export function htmlErrorPage(status: number, requestId: string): string {
  const title = TITLES[status] ?? "Error";
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>${status} ${title}</title></head>
<body>
<h1>${status} ${title}</h1>
<p>Reference: ${requestId}</p>
</body>
</html>
`;
}
