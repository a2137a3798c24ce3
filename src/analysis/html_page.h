/* report.html's page around its data: inline CSS and the script that draws the data
 * (html.c writes it between the two, as JSON in <script type="application/json" id="data">). */
#ifndef FSCOPE_HTML_PAGE_H
#define FSCOPE_HTML_PAGE_H

/* Up to and including the data's opening script tag. */
extern const char html_page_head[];
/* From the data's closing script tag to the end of the page. */
extern const char html_page_tail[];

#endif
