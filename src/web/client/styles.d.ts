// Style sheets are bundled by esbuild; importing one only adds it to the page's CSS.
declare module "*.css";
