/* segtree.c - a device's segments in an AVL tree keyed by start address.
 * The model finds the segment containing an address (floor lookup), checks
 * new segments against their neighbours and walks segments in address order.
 * Segments never overlap, so ordering by start is ordering by range. Owns no
 * memory: the links live in struct mh__segment. */
#include "model_int.h"

static int height(const struct mh__segment *s)
{
    return s ? s->height : 0;
}

static void fix(struct mh__segment *s)
{
    int l = height(s->left), r = height(s->right);
    s->height = (l > r ? l : r) + 1;
}

static struct mh__segment *rot_right(struct mh__segment *s)
{
    struct mh__segment *l = s->left;
    s->left = l->right;
    l->right = s;
    fix(s);
    fix(l);
    return l;
}

static struct mh__segment *rot_left(struct mh__segment *s)
{
    struct mh__segment *r = s->right;
    s->right = r->left;
    r->left = s;
    fix(s);
    fix(r);
    return r;
}

static struct mh__segment *balance(struct mh__segment *s)
{
    fix(s);
    int bf = height(s->left) - height(s->right);
    if (bf > 1) {
        if (height(s->left->left) < height(s->left->right))
            s->left = rot_left(s->left);
        return rot_right(s);
    }
    if (bf < -1) {
        if (height(s->right->right) < height(s->right->left))
            s->right = rot_right(s->right);
        return rot_left(s);
    }
    return s;
}

static struct mh__segment *insert(struct mh__segment *t, struct mh__segment *s)
{
    if (!t)
        return s;
    if (s->addr < t->addr)
        t->left = insert(t->left, s);
    else
        t->right = insert(t->right, s);
    return balance(t);
}

void mh__segtree_insert(struct mh__segment **root, struct mh__segment *s)
{
    s->left = s->right = 0;
    s->height = 1;
    *root = insert(*root, s);
}

static struct mh__segment *remove_min(struct mh__segment *t, struct mh__segment **min)
{
    if (!t->left) {
        *min = t;
        return t->right;
    }
    t->left = remove_min(t->left, min);
    return balance(t);
}

static struct mh__segment *remove_node(struct mh__segment *t, struct mh__segment *s)
{
    if (!t)
        return 0;
    if (t != s) {
        if (s->addr < t->addr)
            t->left = remove_node(t->left, s);
        else
            t->right = remove_node(t->right, s);
        return balance(t);
    }
    if (!t->right)
        return t->left;
    struct mh__segment *min;
    struct mh__segment *right = remove_min(t->right, &min);
    min->left = t->left;
    min->right = right;
    return balance(min);
}

void mh__segtree_remove(struct mh__segment **root, struct mh__segment *s)
{
    *root = remove_node(*root, s);
    s->left = s->right = 0;
}

struct mh__segment *mh__segtree_floor(struct mh__segment *t, uint64_t key)
{
    struct mh__segment *best = 0;
    while (t) {
        if (t->addr <= key) {
            best = t;
            t = t->right;
        } else {
            t = t->left;
        }
    }
    return best;
}

struct mh__segment *mh__segtree_ceil(struct mh__segment *t, uint64_t key)
{
    struct mh__segment *best = 0;
    while (t) {
        if (t->addr >= key) {
            best = t;
            t = t->left;
        } else {
            t = t->right;
        }
    }
    return best;
}

int mh__segtree_walk(struct mh__segment *t, int (*fn)(void *, struct mh__segment *), void *user)
{
    while (t) {
        int rc = mh__segtree_walk(t->left, fn, user);
        if (rc)
            return rc;
        struct mh__segment *right = t->right; /* fn may not free t, but be safe */
        if ((rc = fn(user, t)))
            return rc;
        t = right;
    }
    return 0;
}
