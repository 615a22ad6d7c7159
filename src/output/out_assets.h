/* out_assets.h - files compiled into the binary (cmake/embed_asset.cmake):
 * the HTML report's stylesheet and script, from src/output/assets/. */
#ifndef OUT_ASSETS_H
#define OUT_ASSETS_H

#include <stddef.h>

extern const char out_asset_report_css[];
extern const size_t out_asset_report_css_len;
extern const char out_asset_report_js[];
extern const size_t out_asset_report_js_len;

#endif
