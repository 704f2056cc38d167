/**
 * The XMP packet that marks media as made by AI (IPTC DigitalSourceType), shared by every
 * format that carries XMP (PNG iTXt, MP4 `uuid` box).
 */

/** The IPTC code for media made by a trained model. */
export const TRAINED_ALGORITHMIC_MEDIA =
  "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia";

/** An XMP packet with DigitalSourceType trainedAlgorithmicMedia, CreatorTool Zona and this description. */
export function xmpPacket(description: string): string {
  return `<?xpacket begin="\u{feff}" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    Iptc4xmpExt:DigitalSourceType="${TRAINED_ALGORITHMIC_MEDIA}"
    xmp:CreatorTool="Zona">
   <dc:description>
    <rdf:Alt>
     <rdf:li xml:lang="x-default">${escapeXml(description)}</rdf:li>
    </rdf:Alt>
   </dc:description>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="r"?>`;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
