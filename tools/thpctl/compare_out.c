// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl compare: what the pairs say, as a table, as JSON
 * (doc/thpctl-json.md) and as an SVG chart of the main figure.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <thp/thp.h>

#include "compare.h"
#include "json.h"

/* (No libm for two comparisons.) */
static double dmin(double a, double b)
{
	return a < b ? a : b;
}

static double dmax(double a, double b)
{
	return a > b ? a : b;
}

static const char *policy_name(const struct compare_spec *s, int p)
{
	return thp_policy_name((unsigned int)s->policies[p]);
}

static const char *figure_label(const struct compare_spec *s, enum compare_figure f)
{
	if (f == CMP_METRIC && s->metric_name)
		return s->metric_name;
	if (f == CMP_WALL && s->load)
		return "load wall time";
	return compare_figure_info(f)->label;
}

static enum compare_better figure_better(const struct compare_spec *s, enum compare_figure f)
{
	return f == CMP_METRIC ? s->metric_better : compare_figure_info(f)->better;
}

static void fmt_value(enum compare_figure f, double v, char *buf, size_t len)
{
	const char *unit = compare_figure_info(f)->unit;

	if (isnan(v))
		snprintf(buf, len, "-");
	else if (!strcmp(unit, "s"))
		snprintf(buf, len, "%.3f s", v);
	else if (!strcmp(unit, "bytes"))
		if (v >= 1024.0 * 1024 * 1024)
			snprintf(buf, len, "%.2f GiB", v / (1024.0 * 1024 * 1024));
		else if (v >= 1024.0 * 1024)
			snprintf(buf, len, "%.1f MiB", v / (1024.0 * 1024));
		else
			snprintf(buf, len, "%.0f KiB", v / 1024);
	else if ((v < 0 ? -v : v) >= 1e9)
		snprintf(buf, len, "%.2fG", v / 1e9);
	else if ((v < 0 ? -v : v) >= 1e6)
		snprintf(buf, len, "%.2fM", v / 1e6);
	else if ((v < 0 ? -v : v) >= 1e4)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		snprintf(buf, len, "%.6g", v);
}

static bool figure_measured(const struct compare_run *runs, size_t nruns, enum compare_figure f)
{
	for (size_t i = 0; i < nruns; i++)
		if (!isnan(runs[i].fig[f]))
			return true;
	return false;
}

static void verdict_words(const struct compare_spec *s, enum compare_figure f,
			  const struct compare_verdict *v, int p, char *buf, size_t len)
{
	enum compare_better better = figure_better(s, f);
	const char *good = "";
	char ratio[96] = "";

	if (!isnan(v->ratio_median))
		snprintf(ratio, sizeof(ratio), "%s/%s %.2fx (%.2f .. %.2f) ", policy_name(s, p),
			 policy_name(s, 0), v->ratio_median, v->ratio_min, v->ratio_max);
	switch (v->kind) {
	case VERDICT_LOWER_EVERY:
	case VERDICT_HIGHER_EVERY:
		if (better != BETTER_NONE)
			good = (v->kind == VERDICT_LOWER_EVERY) == (better == BETTER_LOWER) ? " (better)" : " (worse)";
		snprintf(buf, len, "%s%s %s in every pair%s", ratio, policy_name(s, p),
			 v->kind == VERDICT_LOWER_EVERY ? "lower" : "higher", good);
		break;
	case VERDICT_SAME:
		snprintf(buf, len, "%sthe same in every pair", ratio);
		break;
	case VERDICT_NO_DIFFERENCE:
		snprintf(buf, len, "%sno measurable difference: the pairs disagree", ratio);
		break;
	case VERDICT_TOO_FEW:
		snprintf(buf, len, "too few pairs for a verdict (%zu)", v->pairs);
		break;
	}
}

void compare_print_text(const struct compare_spec *s, const struct compare_run *runs,
			size_t nruns, const struct compare_unavailable *na)
{
	double base[COMPARE_MAX_PAIRS], other[COMPARE_MAX_PAIRS];

	printf("thpctl compare: %d pairs of", s->pairs);
	for (int p = 0; p < s->npolicies; p++)
		printf("%s %s", p ? "," : "", policy_name(s, p));
	printf(" (order rotated each pair); medians (min .. max) per policy,\n"
	       "and per figure the ratio to %s in each pair and what every pair agrees on\n\n",
	       policy_name(s, 0));
	printf("%-18s", "figure");
	for (int p = 0; p < s->npolicies; p++)
		printf(p + 1 < s->npolicies ? "  %-34s" : "  %s", policy_name(s, p));
	printf("\n");
	for (int f = 0; f < CMP_NFIG; f++) {
		if (!figure_measured(runs, nruns, f)) {
			printf("%-18s  not measured: %s\n", figure_label(s, f),
			       na->why[f] ? na->why[f] : "no run measured it");
			continue;
		}
		printf("%-18s", figure_label(s, f));
		for (int p = 0; p < s->npolicies; p++) {
			struct compare_stats st;
			char med[32], lo[32], hi[32], cell[104];

			compare_pair_values(runs, nruns, s->pairs, p, f, other);
			compare_stats(other, (size_t)s->pairs, &st);
			fmt_value(f, st.median, med, sizeof(med));
			fmt_value(f, st.min, lo, sizeof(lo));
			fmt_value(f, st.max, hi, sizeof(hi));
			snprintf(cell, sizeof(cell), "%s (%s .. %s)", med, lo, hi);
			printf(p + 1 < s->npolicies ? "  %-34s" : "  %s", cell);
		}
		printf("\n");
		compare_pair_values(runs, nruns, s->pairs, 0, f, base);
		for (int p = 1; p < s->npolicies; p++) {
			struct compare_verdict v;
			char words[200];

			compare_pair_values(runs, nruns, s->pairs, p, f, other);
			compare_verdict(base, other, (size_t)s->pairs, &v);
			verdict_words(s, f, &v, p, words, sizeof(words));
			printf("%-18s  %s\n", "", words);
		}
	}
}

static const char *better_name(enum compare_better b)
{
	return b == BETTER_LOWER ? "lower" : b == BETTER_HIGHER ? "higher"
								: NULL;
}

int compare_print_json(const struct compare_spec *s, const struct compare_run *runs,
		       size_t nruns, const struct compare_unavailable *na)
{
	double base[COMPARE_MAX_PAIRS], other[COMPARE_MAX_PAIRS];
	struct json j;

	json_begin_document(&j, stdout, "compare");
	json_begin_array(&j, "argv");
	for (char **a = s->cmd; *a; a++)
		json_string(&j, NULL, *a);
	json_end_array(&j);
	json_string(&j, "load", s->load);
	json_string(&j, "metric_pattern", s->metric);
	json_u64(&j, "pairs", (uint64_t)s->pairs);
	json_begin_array(&j, "policies");
	for (int p = 0; p < s->npolicies; p++)
		json_string(&j, NULL, policy_name(s, p));
	json_end_array(&j);
	json_string(&j, "baseline", policy_name(s, 0));
	json_begin_array(&j, "runs");
	for (size_t i = 0; i < nruns; i++) {
		json_begin_object(&j, NULL);
		json_u64(&j, "pair", (uint64_t)runs[i].pair + 1);
		json_u64(&j, "order", (uint64_t)runs[i].order + 1);
		json_string(&j, "policy", policy_name(s, runs[i].policy_index));
		json_begin_object(&j, "figures");
		for (int f = 0; f < CMP_NFIG; f++)
			json_double(&j, compare_figure_info(f)->json_name, runs[i].fig[f]);
		json_end_object(&j);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_begin_array(&j, "figures");
	for (int f = 0; f < CMP_NFIG; f++) {
		bool measured = figure_measured(runs, nruns, f);

		json_begin_object(&j, NULL);
		json_string(&j, "name", compare_figure_info(f)->json_name);
		json_string(&j, "label", figure_label(s, f));
		json_string(&j, "unit", compare_figure_info(f)->unit);
		json_string(&j, "better", better_name(figure_better(s, f)));
		json_bool(&j, "available", measured);
		json_string(&j, "reason", measured ? NULL : na->why[f] ? na->why[f]
								       : "not measured");
		json_begin_array(&j, "policies");
		for (int p = 0; p < s->npolicies; p++) {
			struct compare_stats st;

			compare_pair_values(runs, nruns, s->pairs, p, f, other);
			compare_stats(other, (size_t)s->pairs, &st);
			json_begin_object(&j, NULL);
			json_string(&j, "policy", policy_name(s, p));
			json_double(&j, "median", st.median);
			json_double(&j, "min", st.min);
			json_double(&j, "max", st.max);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_begin_array(&j, "comparisons");
		compare_pair_values(runs, nruns, s->pairs, 0, f, base);
		for (int p = 1; p < s->npolicies && measured; p++) {
			struct compare_verdict v;

			compare_pair_values(runs, nruns, s->pairs, p, f, other);
			compare_verdict(base, other, (size_t)s->pairs, &v);
			json_begin_object(&j, NULL);
			json_string(&j, "policy", policy_name(s, p));
			json_u64(&j, "pairs", v.pairs);
			json_string(&j, "verdict", compare_verdict_name(v.kind));
			json_double(&j, "ratio_median", v.ratio_median);
			json_double(&j, "ratio_min", v.ratio_min);
			json_double(&j, "ratio_max", v.ratio_max);
			json_end_object(&j);
		}
		json_end_array(&j);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	return json_finish(&j);
}

/* @text as SVG character data (a --metric-name may hold anything). */
static void xml_text(FILE *out, const char *text)
{
	for (const char *c = text; *c; c++)
		switch (*c) {
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '&':
			fputs("&amp;", out);
			break;
		default:
			if ((unsigned char)*c >= 0x20 || *c == '\t')
				fputc(*c, out);
		}
}

/* The chart's figure: the --metric if there is one, else the wall time. */
int compare_write_svg(const char *path, const struct compare_spec *s,
		      const struct compare_run *runs, size_t nruns)
{
	static const char *colour[COMPARE_MAX_POLICIES] = { "#1f77b4", "#d62728", "#2ca02c",
							    "#9467bd" };
	enum compare_figure f = s->metric ? CMP_METRIC : CMP_WALL;
	const int w = 640, h = 360, left = 80, right = 150, top = 40, bottom = 50;
	double lo = INFINITY, hi = -INFINITY, v[COMPARE_MAX_PAIRS];
	FILE *out = fopen(path, "we");

	if (!out)
		return -1;
	for (size_t i = 0; i < nruns; i++)
		if (!isnan(runs[i].fig[f])) {
			lo = dmin(lo, runs[i].fig[f]);
			hi = dmax(hi, runs[i].fig[f]);
		}
	if (!isfinite(lo)) {
		lo = 0;
		hi = 1;
	}
	/* From zero, so that a ratio looks like one; some headroom above. */
	lo = dmin(lo, 0);
	hi = hi > lo ? hi * 1.1 : lo + 1;
	double plot_w = w - left - right, plot_h = h - top - bottom;
	double x_step = s->pairs > 1 ? plot_w / (s->pairs - 1) : 0;

	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		     "font-family=\"sans-serif\" font-size=\"12\">\n",
		w, h);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(out, "<text x=\"%d\" y=\"20\" font-size=\"14\">", left);
	fputs("thpctl compare: ", out);
	xml_text(out, figure_label(s, f));
	fprintf(out, " per pair (%s)</text>\n",
		f == CMP_METRIC ? (figure_better(s, f) == BETTER_HIGHER ? "higher is better" : "lower is better") : "seconds, lower is better");
	/* Axes and the y range. */
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left,
		top, left, h - bottom);
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left,
		h - bottom, w - right, h - bottom);
	for (int t = 0; t <= 4; t++) {
		double val = lo + (hi - lo) * t / 4;
		double y = top + plot_h * (1 - (double)t / 4);

		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
			left - 6, y + 4, val);
		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			left + 1, y, w - right, y);
	}
	for (int p = 0; p < s->pairs; p++)
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">pair %d</text>\n",
			left + x_step * p + (s->pairs > 1 ? 0 : plot_w / 2), h - bottom + 18, p + 1);
	/* Each pair joined by a grey line, each policy's value a dot. */
	for (int pair = 0; pair < s->pairs; pair++) {
		double x = left + x_step * pair + (s->pairs > 1 ? 0 : plot_w / 2);
		double ymin = INFINITY, ymax = -INFINITY;

		for (int p = 0; p < s->npolicies; p++) {
			compare_pair_values(runs, nruns, s->pairs, p, f, v);
			if (isnan(v[pair]))
				continue;
			double y = top + plot_h * (1 - (v[pair] - lo) / (hi - lo));

			ymin = dmin(ymin, y);
			ymax = dmax(ymax, y);
		}
		if (isfinite(ymin))
			fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				     "stroke=\"#999\" stroke-width=\"2\"/>\n",
				x, ymin, x, ymax);
		for (int p = 0; p < s->npolicies; p++) {
			compare_pair_values(runs, nruns, s->pairs, p, f, v);
			if (isnan(v[pair]))
				continue;
			fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\">"
				     "<title>pair %d, %s: %.6g</title></circle>\n",
				x,
				top + plot_h * (1 - (v[pair] - lo) / (hi - lo)), colour[p], pair + 1,
				policy_name(s, p), v[pair]);
		}
	}
	for (int p = 0; p < s->npolicies; p++) {
		fprintf(out, "<circle cx=\"%d\" cy=\"%d\" r=\"5\" fill=\"%s\"/>\n", w - right + 20,
			top + 10 + 20 * p, colour[p]);
		fprintf(out, "<text x=\"%d\" y=\"%d\">--policy %s</text>\n", w - right + 30,
			top + 14 + 20 * p, policy_name(s, p));
	}
	fprintf(out, "</svg>\n");
	return ferror(out) | fclose(out) ? -1 : 0;
}
