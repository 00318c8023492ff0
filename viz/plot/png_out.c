/* png_out.c - PNG encoding and decoding of canvases with libpng (see
 * png_out.h). libpng reports errors by longjmp; every libpng call here
 * happens between setjmp and the cleanup, and nothing that needs freeing is
 * created in between without being reachable from the cleanup. */
#include "png_out.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"

static void sink_write(png_structp png, png_bytep data, size_t len)
{
    struct mh__sink *s = png_get_io_ptr(png);
    mh__sink_write(s, data, len);
}

static void sink_flush(png_structp png)
{
    (void)png;
}

int mh__png_write(struct mh__sink *out, const struct mh__canvas *c)
{
    if (!c->px || c->width < 1 || c->height < 1)
        return MH_EINVAL;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    if (!png)
        return MH_ENOMEM;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return MH_ENOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return MH_EFORMAT;
    }
    png_set_write_fn(png, out, sink_write, sink_flush);
    png_set_compression_level(png, 6);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB | PNG_FILTER_UP);
    png_set_IHDR(png, info, (png_uint_32)c->width, (png_uint_32)c->height, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
    png_write_info(png, info);
    for (int y = 0; y < c->height; y++)
        png_write_row(png, c->px + (size_t)y * (size_t)c->width * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return out->error ? MH_EIO : 0;
}

struct mem_src {
    const unsigned char *data;
    size_t len, pos;
    png_bytep row; /* decode buffer, freed by the caller even after a longjmp */
};

static void mem_read(png_structp png, png_bytep dst, size_t len)
{
    struct mem_src *m = png_get_io_ptr(png);
    if (len > m->len - m->pos)
        png_error(png, "truncated");
    memcpy(dst, m->data + m->pos, len);
    m->pos += len;
}

static int read_rows(png_structp png, png_infop info, struct mem_src *src, struct mh__canvas *out)
{
    png_uint_32 w, h;
    int depth, type;
    png_get_IHDR(png, info, &w, &h, &depth, &type, NULL, NULL, NULL);
    if (depth != 8 || (type != PNG_COLOR_TYPE_RGB && type != PNG_COLOR_TYPE_RGBA) ||
        w > MH__CANVAS_MAX_SIDE || h > MH__CANVAS_MAX_SIDE)
        return MH_EFORMAT;
    int channels = type == PNG_COLOR_TYPE_RGBA ? 4 : 3;
    int rc = mh__canvas_init(out, (int)w, (int)h, 0);
    if (rc)
        return rc;
    png_bytep row = src->row = malloc((size_t)w * 4);
    if (!row) {
        mh__canvas_release(out);
        return MH_ENOMEM;
    }
    for (png_uint_32 y = 0; y < h; y++) {
        png_read_row(png, row, NULL);
        for (png_uint_32 x = 0; x < w; x++)
            memcpy(out->px + ((size_t)y * w + x) * 3, row + (size_t)x * channels, 3);
    }
    return 0;
}

int mh__png_read(const void *data, size_t len, struct mh__canvas *out)
{
    memset(out, 0, sizeof *out);
    if (len < 8 || png_sig_cmp(data, 0, 8) != 0)
        return MH_EFORMAT;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    if (!png)
        return MH_ENOMEM;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return MH_ENOMEM;
    }
    struct mem_src src = {data, len, 0, NULL};
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(src.row);
        mh__canvas_release(out);
        return MH_EFORMAT;
    }
    png_set_read_fn(png, &src, mem_read);
    png_read_info(png, info);
    int rc = read_rows(png, info, &src, out);
    png_destroy_read_struct(&png, &info, NULL);
    free(src.row);
    return rc;
}
